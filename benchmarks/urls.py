from django.urls import path

from .views import jsonrpc_view

urlpatterns = [path("view/", jsonrpc_view)]
