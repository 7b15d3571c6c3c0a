"""The lab of real bottlenecks (issue 15): scenarios that induce one real limit on a throwaway
MariaDB (a CPU quota on it, a write-IOPS limit on its disk, a CPU quota on the load generator, or
none), run `perfkit run sysbench` and `perfkit analyze`, and always restore the machine.

Run from the repository root: `python3 -m scripts.scenarios --help` (README.md beside this file).
"""
