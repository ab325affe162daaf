# Service deployment: systemd units and examples under deploy/ (docs/deploy.md).
#   make deploy-check   systemd-analyze verify the units (no systemd needed
#                       running), check their flags against the built binaries

CARGO_RELEASE_DIR ?= target/release

.PHONY: deploy-check
deploy-check:
	BIN=$(CARGO_RELEASE_DIR) bash scripts/deploy-check.sh
