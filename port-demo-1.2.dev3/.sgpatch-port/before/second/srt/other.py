def other():
    return 0
