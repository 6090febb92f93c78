"""Parallel research steps, then a dependent writing step whose draft is kept verbatim."""
