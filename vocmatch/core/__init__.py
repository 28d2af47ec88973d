"""The maths: the object model, the number grammar, IoU, exact geometry, AP, matching and the
protocols.
"""
