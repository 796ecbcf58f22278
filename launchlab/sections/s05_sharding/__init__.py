"""§5 each optimization plants the next occupancy bug: the audit that greps for the dimension."""
