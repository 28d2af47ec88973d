"""Every output: terminal tables, JSON/CSV/Markdown/JUnit, HTML, diagrams and atomic report
files."""
