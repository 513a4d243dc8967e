"""Exercises: students write the kernels of the course, and a grader names their mistakes."""
