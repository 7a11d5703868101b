"""The history graph (scene, items, view, gestures, minimap, panel) and the commit timeline."""
