"""Public GitOps repositories (and look-alikes of unlicensed ones) that gitkrm must sync as
Flux or Argo CD would: the data of tests/e2e/test_corpus.py and benchmarks/bench_corpus.py.
Each directory is one repository; `cases` names the paths synced in them."""
