"""The intermediate representation: frozen, typed dataclasses, one per stage (float model, fixed
model, MFCC front end, model metadata), and the registry of adaptation modes."""
