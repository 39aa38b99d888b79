"""The stand-in's cli package."""
