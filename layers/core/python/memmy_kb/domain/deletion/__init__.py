"""Deletion: a KB, folder or file hidden at once with its outbox item, then cleaned up in MemOS, S3 and the
table. Empty on purpose: importing one module loads no other.
"""
