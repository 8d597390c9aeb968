"""The pure model of an experiment: the profile's schema, its derived layout, the records and the step table.

Nothing here imports Pulumi (tests/unit/test_model_pure.py): the step programs, the operator tools and the policy
pack read the same model as the components that turn it into resources.
"""
