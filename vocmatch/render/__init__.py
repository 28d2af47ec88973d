"""Every output: terminal tables, JSON/CSV/Markdown/JUnit, HTML and diagrams (the files are
written by :mod:`vocmatch.files`)."""
