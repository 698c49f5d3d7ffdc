"""Reading a project: which files a run sees, what keeps a hostile file from ending it, and the
model of each file that every stage reads (its scan, Python's scopes, what the whole file
says, line maps, the syntax of launch scripts, inline suppressions)."""
