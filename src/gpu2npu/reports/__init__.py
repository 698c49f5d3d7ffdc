"""Rendering of records: CSV files (pandas), the run log, the console summary.  Nothing else in
the package imports pandas or prettytable."""
