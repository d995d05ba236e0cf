"""Fuzz targets (Hypothesis): every input gives an answer or a gitkrm error, never another
exception, a crash or a hang. Short runs in the normal suite (profile "ci"), long runs with
`make fuzz` (profile "fuzz"); see tests/conftest.py."""
