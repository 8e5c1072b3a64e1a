"""Library prompts rendered from Django templates (TemplatePrompt)."""
