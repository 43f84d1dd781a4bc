"""The compat surface: what the installed Paddle's torch-compat layer really provides
(headers, declared C++ names, exported symbols, the Python proxy's attributes)."""
