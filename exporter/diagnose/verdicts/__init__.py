"""One module per verdict, each defining `VERDICT`; `exporter.diagnose.registry` lists them in walk order."""
