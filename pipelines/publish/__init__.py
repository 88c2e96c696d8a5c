"""What follows a successful sync: the dbt build (`dbt_build.py`), the record that lets a quiet
run keep current marts (`build_record.py`), and the read-only BI snapshot (`snapshot.py`).
"""
