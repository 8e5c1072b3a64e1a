from django.contrib import admin
from django.urls import include, path
from library.api import book_card, router
from library.views import index

urlpatterns = [
    path("", index, name="index"),
    path("api/", include(router.urls)),
    path("books/<int:pk>/card/", book_card, name="book-card"),
    path("admin/", admin.site.urls),
]
