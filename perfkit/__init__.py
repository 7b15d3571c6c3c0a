"""perfkit: why does throughput stop growing, and where is the bottleneck?"""

__version__ = "0.1.0"
