"""The thin HTTP layer: parse requests, call the rules, render replies and errors."""
