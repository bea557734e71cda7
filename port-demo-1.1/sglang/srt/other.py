def other():
    return 42
