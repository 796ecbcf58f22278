"""§8 when a reshape is not free: split counts reassociate the combine."""
