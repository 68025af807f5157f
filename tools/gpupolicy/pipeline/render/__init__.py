"""Rendering overlays with kustomize, and tracing a rendered field back to the overlay edit that set it."""
