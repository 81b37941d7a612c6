"""Reconcile: the scheduled repair pass (stuck uploads and creates, due cleanups, residue) and what it
reports. Empty on purpose: importing one module loads no other.
"""
