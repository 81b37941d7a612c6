"""Provisioning moto from template.yaml: one provisioner per resource type (docs/architecture.md, "Local stack")."""
