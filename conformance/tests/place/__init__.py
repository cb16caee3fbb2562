"""PLACE and XC: where versions go, routes and cross-cloud marks."""
