__version__ = version = '1.1'
