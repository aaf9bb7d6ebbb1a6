"""The ASP programs of LogicVal, installed as the resource package ``logicval_hf.asp_programs``."""
