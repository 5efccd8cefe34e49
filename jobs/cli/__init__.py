"""The command line (`softgrade`, `python -m jobs`): a thin dispatcher over the worker, the
lab services, the store and the report builders. It sits above the pages' presentation
helpers, so a command such as `report` builds in this process."""
