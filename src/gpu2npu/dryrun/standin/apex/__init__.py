"""CPU stand-in for Ascend apex (test use only): just `apex.amp`, see amp.py."""
