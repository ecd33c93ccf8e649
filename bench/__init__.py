"""The benchmarks: each module is a script run from the repository root as
`python -m bench.<name>` (bench/README.md groups them and says what each answers), so
that the project's packages and the shared helpers (`bench.machine`, `bench.sst2`) import
without any edit of `sys.path`."""
