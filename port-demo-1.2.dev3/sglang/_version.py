__version__ = version = '1.2.dev3'
