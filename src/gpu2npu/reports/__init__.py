"""Rendering of records: CSV files (the csv module), the run log, the console summary
(prettytable).  Nothing else in the package imports prettytable."""
