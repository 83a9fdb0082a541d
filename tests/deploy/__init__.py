"""Deployment artefacts without a cluster: the Helm chart, the Dockerfile, skaffold, e2e."""
