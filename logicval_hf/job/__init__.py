"""The main job (`logicval run`): benchmark -> images -> scene graphs -> verdicts -> report."""
