"""memory_api"""
