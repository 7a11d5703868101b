"""Pure model of Treechat: the conversation DAG, commits, rules, render, budget and layout."""
