"""Dagster glue: a module per stage (its assets), the resources, and the platform wing (`platform/`:
the memo layer, automation, runs and Dagster's private API), which imports no stage."""

import warnings

import dagster as dg

# observable source assets and user data versions are marked beta; the incremental lineage is built
# on them knowingly, so their warnings would only be noise in every run's log
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)
