"""Reading annotations: the XML parser and fast column reader, other prediction formats, the VOC
folder layout, lint.
"""
