"""The benchmark app of ``models_vs_drf.py``: one model with a foreign key, as a ModelResource and as DRF views."""
