"""JupyterHub for a class on one server (``make hub``): each student's lab is ``make lab`` in
class mode, with the hub user's name as the nbgrader student id."""
