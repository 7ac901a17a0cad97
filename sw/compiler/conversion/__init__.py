"""Passes that change dialect: SCF -> SLC (decoupling), SLC -> DLC."""
