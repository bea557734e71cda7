import os
import sys
import re


class A:
    def f(self):
        return 100

    def g(self):
        return 2

# filler 0
# filler 1
# filler 2
# filler 3
# filler 4
# filler 5
# filler 6
# filler 7
# filler 8
# filler 9
# filler 10
# filler 11

def helper():
    x = 10
    z = 0
    y = 20
    return x + y + z
