# FishStore targets of the published artifact. FishStore (Microsoft's C++ store
# the paper compared with) has no Debian or crates.io package and its code may not
# be copied into this project, so these targets cannot run here: each says so,
# says where FishStore's published numbers appear, and exits non-zero.
# Included by the root Makefile (-include mk/*.mk).

FISHSTORE_TARGETS := build-fishstore is-fishstore e2e-fishstore-app \
	rocksdb-fishstore-p1 rocksdb-fishstore-p2 rocksdb-fishstore-p3 \
	valkey-fishstore-p1 valkey-fishstore-p2 valkey-fishstore-p3 \
	pe-fishstore-app pe-fishstore-app-no-index pe-rocksdb-fishstore

.PHONY: $(FISHSTORE_TARGETS)

$(FISHSTORE_TARGETS):
	@echo "$@: FishStore is not part of this project: it has no package (Debian, crates.io)" >&2
	@echo "  and its code cannot be copied in, so the published artifact's FishStore runs cannot be reproduced here." >&2
	@echo "  FishStore's published numbers (64-core server) appear, labelled 'FishStore, published', in" >&2
	@echo "  figure 13 (probe effect: -7.5 % RocksDB throughput; figures/plotutil.py PUBLISHED_*) and in" >&2
	@echo "  the 'Reproduce the paper' table of docs/reproduce.md; the other FishStore results exist only in the paper." >&2
	@exit 2
