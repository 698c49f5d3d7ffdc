"""The commands below the command line (cli.py): a migration run and what it is asked
(request), check and its baseline."""
