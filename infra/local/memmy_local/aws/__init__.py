"""moto as the local stack runs it, and what it patches or adds there: DynamoDB, Step Functions (docs/architecture.md, "Local stack")."""
