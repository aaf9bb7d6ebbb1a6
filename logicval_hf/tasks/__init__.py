"""GIR-Bench's tasks that a scene graph does not carry: text rendering (the words an image must show, read by OCR,
scored as GIR-Bench scores them: `text_rendering`) and visual logic (Sudoku puzzles made and decided by clingo, their
images read back by OCR: `sudoku`)."""
