"""Knowledge bases: creating and managing a KB and its tree (folders, files and their names), where it is
placed among the MemOS backends, and its activity log. Empty on purpose: importing one module loads no
other.
"""
