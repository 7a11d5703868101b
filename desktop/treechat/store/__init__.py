"""The only package that imports duckdb: schema, migrations, repository and its worker."""
