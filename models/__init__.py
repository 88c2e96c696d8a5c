"""The dbt project, installed as package data of `drone_ops_sync.models`.

Only its SQL and YAML matter; this file exists so `importlib.resources` finds the project in a
wheel install as in the repository (`drone_ops_sync.pipelines.publish.dbt_build.PROJECT_DIR`).
dbt reads only its model, macro and test paths, so it never sees this file.
"""
