"""Uploads: a file's bytes from the presigned POST to a file in MemOS, or a rejection; a replace (a file's
next version); the formats, their checks and conversions; what an upload leaves behind. Empty on purpose:
importing one module loads no other.
"""
