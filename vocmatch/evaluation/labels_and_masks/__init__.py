"""The evaluations that are not of boxes: label sets per image (``--mode labels``) and
semantic-segmentation masks (``vocmatch seg``)."""
