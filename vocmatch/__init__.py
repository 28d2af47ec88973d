"""vocmatch: score object-detection annotations in PASCAL VOC / LabelImg XML."""

__version__ = "0.1.0"
__all__ = ["__version__"]
