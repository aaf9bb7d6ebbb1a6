"""Sudoku, GIR-Bench's visual logic task, decided by the solver: puzzles made with clingo (each solution proved unique
by a second solve that must be UNSAT), drawn as images, and images read back (the grid found, its cells read by OCR)
and checked by clingo's rules rather than against the stored solution.

=========================  ==================================================================
`puzzle`                   the puzzle as data: its JSON file, grids as 9 lists of 9 digits
`solver`                   clingo: complete grids, uniqueness proofs, puzzles by removal, rule checks
`draw`                     a grid as an image (givens in black, filled digits in blue)
`read`                     an image back to a grid: the grid found, each cell read by OCR
`api`                      ``logicval sudoku make`` and ``check``: `make_puzzles`, `check_image`
=========================  ==================================================================
"""
